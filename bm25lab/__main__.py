"""``python -m bm25lab ...``: the same command line as the installed ``bm25lab`` script."""
from .cli import main

if __name__ == "__main__":
    main()
