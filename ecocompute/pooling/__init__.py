"""pooling: many reports turned into figures: aggregate.py tables them (a Table of
groups, its CSV rows), groups.py groups them (kind, card, model, size, format, software,
protocol), units.py pools a group across its GPU units (random effects), check.py grades
one report against the published figures. Each returns typed values and a render
function gives the text; printing and exit statuses are the command line's.

May import: results (reading reports), report, published, boundary (user paths), core,
errors.
"""
