"""How good an answer is: judges that check it point by point against the card's mechanism key."""
