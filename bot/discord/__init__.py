"""The Discord adapter: slash commands, buttons and modals over the quiz engine."""
