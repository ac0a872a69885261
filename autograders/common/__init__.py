"""What the editions and the grading both read: the course's settings, the hidden-test regions of a
test cell, the rubric cells' format. Imports nothing of ``autograders`` (both sides import it)."""
