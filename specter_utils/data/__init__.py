"""Data layer: one paper record type and readers/writers for every format the project meets."""

from specter_utils.data.records import Paper, ReadReport

__all__ = ["Paper", "ReadReport"]
