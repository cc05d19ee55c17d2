"""The lab: simulated fabrics (IB via ibsim, RoCE hosts over SSH, switches over SNMP) that the
README's first command, the end-to-end tests and the benchmarks all run against."""
