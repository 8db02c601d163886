"""What to ask and when: the deck of traps and the SM-2 scheduler."""
