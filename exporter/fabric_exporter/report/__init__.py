"""``fabric-exporter report``: a RoCE-vs-InfiniBand POC report from Prometheus's HTTP API.

Imported only when the command runs (it needs matplotlib: ``pip install 'fabric-exporter[report]'``).
``prom`` talks to Prometheus, ``episodes`` is the pure episode/recovery arithmetic, ``collect``
turns a window into figures (summary.json), ``plots`` and ``page`` draw index.html, ``main`` is the
command.
"""
