"""forge's Django dashboard: persistence, execution through tasks, the approval inbox."""
