"""The package version (one place; read by the face, the CLI and saved files)."""

__version__ = "0.1.0"
