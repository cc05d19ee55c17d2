"""Pure parsers: a tool's text in, typed records out. No I/O, no clock.

Every parser raises only ``fabric_exporter.errors.ParseError`` on input it cannot read, and never
returns a value it did not read.
"""

from ..errors import ParseError

__all__ = ["ParseError"]
