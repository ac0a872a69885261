"""One module of checks per level: ``from autograders.checks import level2``."""
