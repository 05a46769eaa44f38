"""BF-IO's lookahead: the offset discount, the admission rules, the tracked loads,
the decode profiles and a BF-IO row's identity (``run_keys``).
"""
