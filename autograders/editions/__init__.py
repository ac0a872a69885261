"""Building the workbook's two editions: the practice edition and the graded nbgrader release
(``editions``), the notebooks' clean form (``clean``), and the nbgrader preprocessors of each
edition (``preprocessors``)."""
