"""One error tree for the whole tool.

The CLI maps these to exit codes (2 for bad input or usage, 1 for a well-formed request that
cannot be met), so library code raises them instead of printing or exiting.
"""

from __future__ import annotations


class EdgeplanError(Exception):
    """Base of every error edgeplan raises on purpose."""

    exit_code = 2

    def __init__(self, message: str, *, file: str | None = None, node: str | None = None,
                 rule: str | None = None) -> None:
        self.message = message
        self.file = file
        self.node = node
        self.rule = rule
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """File, node and rule first, so the line is greppable in batch logs; control characters from a
        file or node name are escaped, so a name can neither break the line nor drive the terminal."""
        parts = [p for p in (self.file, f"node {self.node}" if self.node else None, self.rule) if p]
        text = " ".join(self.message.split())
        return ": ".join(_printable(p) for p in [*parts, text])


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


class BadInputError(EdgeplanError):
    """The model file, a flag or a config is malformed or unsafe (exit 2)."""

    exit_code = 2


class InfeasibleError(EdgeplanError):
    """The input is well formed but the request cannot be met (exit 1)."""

    exit_code = 1
