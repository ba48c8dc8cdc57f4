"""The one place the version is written: the package, the CLI and the wheel's metadata read it here."""

__version__ = "0.1.0"
