"""The workbook's sentences: the words its figures and explorers are drawn over. They are content, kept
beside the problems; :mod:`mha_core` takes them as arguments (``mha.plots.sentence_heatmap(SENTENCE)``).
"""

SENTENCE = "the cat sat on the mat because it was tired".split()  # Level 2's sentence, figure s01, n = 10

# Level 2's sentence, continued so that the shape explorer's n can grow to 24 with real words.
TOKENS = SENTENCE + "so it slept all afternoon while the dog watched birds outside the window".split()

# Cross-attention (figure s02, Problem 5.3) translates English (the encoder's source: keys and values)
# into French (the decoder's target: queries); 12 words each, in the lexicon of mha_core.heads.EN_FR.
ENGLISH = "the black cat sat on the mat because it was very tired".split()
FRENCH = "le chat noir s'assit sur le tapis car il était très fatigué".split()

# The classroom demo's "Where does this word look?": (label, query tokens, key tokens or None for
# self-attention, the word first asked about).
HEAD_VIEW_SENTENCES = (
    ("the cat sat on the mat because it was tired", SENTENCE, None, "it"),
    ("the animal did not cross the street because it was too tired",
     "the animal did not cross the street because it was too tired".split(), None, "it"),
    ("the queen met the king and she thanked him", "the queen met the king and she thanked him".split(), None, "him"),
    ("the dog saw the cat and the cat saw the dog", "the dog saw the cat and the cat saw the dog".split(), None,
     "cat"),
    ("English → French: le chat noir s'assit sur le tapis", "le chat noir s'assit sur le tapis".split(),
     "the black cat sat on the mat".split(), "noir"),
)
