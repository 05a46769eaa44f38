"""Exceptions raised for bad input. Every message names the file, row, field or
config key at fault so the user can fix it without reading code."""


class BfioError(Exception):
    """Base class of every error the package raises on purpose."""


class TraceError(BfioError, ValueError):
    """A request trace is missing, unreadable or malformed.

    ``path``, ``row`` (0-based data row, or ``None``) and ``field`` say where.
    """

    def __init__(self, path, message, row=None, field=None):
        self.path = str(path)
        self.row = row
        self.field = field
        where = [f"file {self.path}"]
        if row is not None:
            where.append(f"row {row}")
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {message}")


class ChecksumError(TraceError):
    """A trace file's sha256 differs from the one the project pins."""


class ProfileError(BfioError, ValueError):
    """A kernel-profile file of the calibrated step model (:mod:`bfio.step_model`)
    is missing or is not the pinned one; the message names the file."""

    def __init__(self, path, message):
        self.path = str(path)
        super().__init__(f"profile file {self.path}: {message}")


class DownloadError(BfioError):
    """A trace could not be fetched from its source (after every retry); the
    message names the URL and the last error. Nothing is left at the
    destination."""


class PolicyError(BfioError, ValueError):
    """A routing policy returned an invalid assignment or was misconfigured."""


class ConfigError(BfioError, ValueError):
    """A configuration key has a bad value; the message names the key."""
