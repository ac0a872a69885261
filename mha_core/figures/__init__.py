"""What the workbook's figures and explorers are drawn with, one concern a module:

- :mod:`.base`: the figure class, colours, input checks, the heatmap and bar building blocks;
- :mod:`.grid`: the per-head grid's layout, relabelled in place;
- :mod:`.screen`: figures sized in pixels for a projector (the classroom demo);
- :mod:`.counts`: operation counts and parameters against h (Problems 3.1, 4.1);
- :mod:`.head_view`: where one word looks, every head at once.

The paper's figures themselves (s01, s02, the head grid) are in :mod:`mha_core.plots`.
"""
