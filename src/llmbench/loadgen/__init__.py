"""Load generation for serving benchmarks: request schedules, the streaming OpenAI client with
per-token arrival times, and the client's check on itself. Imports nothing heavy."""
