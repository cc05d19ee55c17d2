"""The InfiniBand collector's harness checks (tests/harness/infiniband.py): every harness poll
render-checked, every harness closed at the module's end."""

from tests.harness.infiniband import _close_harnesses, _verify_render  # noqa: F401
