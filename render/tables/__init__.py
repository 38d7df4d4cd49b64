"""Tables: columns and formatters, and the builders of each table kind."""
