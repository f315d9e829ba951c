-- storlab 0.11.0 -> 0.12.0
\echo Use "ALTER EXTENSION storlab UPDATE TO '0.12.0'" to load this file. \quit
