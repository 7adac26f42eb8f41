"""JSON on the wire: request bodies decoded with the API's refusals, answers encoded."""
