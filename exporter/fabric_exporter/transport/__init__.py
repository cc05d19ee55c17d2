"""How bytes are fetched: local subprocess, SSH (asyncssh, pooled) and SNMP (pysnmp 7).

Collectors see only the small interfaces in ``base``; parsers never see a transport.
"""
