"""What a claim's kind is, below both the spec (which validates a claim by its kind) and the judge.

:mod:`simcomm.spec` checks a claim table with its kind's rules and :mod:`simcomm.claims` judges a claim
with its kind's cells and statistics; both import the kinds from here, so neither imports the other's
internals. The public names are re-exported by :mod:`simcomm.claims`.
"""
