"""``python -m apcore_mcp``."""

from apcore_mcp.run.cli import main

if __name__ == "__main__":
    main()
