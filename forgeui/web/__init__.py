"""The pages: views, forms, middleware, health probes, and what only the pages draw."""
