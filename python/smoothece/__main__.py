"""``python -m smoothece``: the same command line as the ``smoothece`` script."""

from .cli import run

if __name__ == "__main__":
    run()
