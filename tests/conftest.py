import os

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(autouse=True)
def _reset_user_catalogs():
    """Each test starts from the packaged catalog (the CLI's --catalog adds files process-wide)."""
    from roofline.catalog import reset_user_files

    reset_user_files()
    yield
    reset_user_files()


@pytest.fixture
def run_cli(capsys):
    """Run the CLI in-process; return (exit code, stdout, stderr)."""
    from roofline.cli import main

    def run(*args):
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = exc.code
        out = capsys.readouterr()
        return code, out.out, out.err

    return run
