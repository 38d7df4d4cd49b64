"""Numbers as the site shows them: Quantity and its algebra, claims, the ledger, how a number reads."""
