"""Build hook: a wheel carries the notebooks and the run presets beside the code (``specter_utils/package_data/``),
so ``specter-utils run`` works from an installed wheel as from the checkout (``specter_utils.paths``)."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SHIPPED = {"notebooks": "*.ipynb", "params": "*.yaml"}  # paths.SHIPPED_FOLDERS, with the files each ships


class BuildWithNotebooks(build_py):
    """``build_py``, then the checkout's notebooks and presets copied into the built package."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "specter_utils" / "package_data"
        for folder, pattern in SHIPPED.items():
            files = sorted((ROOT / folder).glob(pattern))
            if not files:
                raise SystemExit(f"setup.py: no {pattern} in {ROOT / folder}: a wheel needs the {folder}/ folder")
            (target / folder).mkdir(parents=True, exist_ok=True)
            for file in files:
                shutil.copy2(file, target / folder / file.name)


setup(cmdclass={"build_py": BuildWithNotebooks})
