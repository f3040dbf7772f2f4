"""published: the reference figures of the no-GPU path. curves.py holds the two formulas
and the typed curves; site_curves.py reads the published site's own curves.json (fits,
ranges, caps, FP16 anchors; data/site/); reference_data.py the DOIs and other published
facts, project.py this project's own H200 figures (labelled, never published);
figures.py builds a figure from them. archs.py detects a GPU's arch class by product
name, and prefetch.py asks the site's estimator for its prediction (--prefetch).

May import: errors, precision, units.
"""
