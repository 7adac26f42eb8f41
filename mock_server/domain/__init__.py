"""Pure rules and records (limits, events, CPF/CNPJ, instants, errors): imports nothing else of the package."""
