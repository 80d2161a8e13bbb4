"""``python -m simcomm`` is the ``simcomm`` command."""

from simcomm.cli import main

if __name__ == "__main__":
    main()
