"""What a cell assigns, read and never run: the report's choices and the predictions both use it."""

import ast


def literal_assignments(source):
    """[(name, value)] of each top-level ``name = ...`` of ``source``, in order; ``value`` is the literal
    assigned (a number, a string, a tuple...) or None when it is not a literal. A syntax error gives []."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                value = None
            found.append((node.targets[0].id, value))
    return found
