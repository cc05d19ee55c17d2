"""The InfiniBand fixtures (tests/harness/infiniband.py): a simulated fat tree per module, every
harness poll render-checked, every harness closed at the module's end."""

from tests.harness.infiniband import _close_harnesses, _verify_render, fabric  # noqa: F401
