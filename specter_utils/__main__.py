"""``python -m specter_utils`` is the same as the ``specter-utils`` command."""

from specter_utils.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
