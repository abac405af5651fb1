"""The command line's one error type and its exit statuses."""

from __future__ import annotations

EXIT_OK = 0
EXIT_DATA = 1  # the data cannot be scored: bad or missing values, an unreadable file
EXIT_USAGE = 2  # the command line is wrong: options, file name or format, column names


class CLIError(Exception):
    """An error reported as one line on stderr, with an exit status."""

    def __init__(self, message: str, code: int = EXIT_DATA):
        super().__init__(message)
        self.code = code


def usage_error(message: str) -> CLIError:
    return CLIError(message, EXIT_USAGE)
