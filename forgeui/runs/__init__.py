"""What people do to runs (services), how graphs execute (tasks, registry), and deadlines."""
