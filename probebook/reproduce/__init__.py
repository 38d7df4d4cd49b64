"""``probebook reproduce``: re-measure a record (or match it elsewhere), compare every number and claim, archive it.

``session`` runs it; ``commands`` rebuilds each cited run with today's probe; ``campaign`` runs them as a
resumable campaign; ``job`` is one run's job; ``match`` is ``--with``'s rule; ``compare`` renders and pairs;
``verdict`` is the rule on one number or claim. Only ``job`` (and what it imports) runs inside a campaign job.
"""
