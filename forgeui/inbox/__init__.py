"""The approval inbox: its websocket, the event feed it follows, and the rows it draws."""
