"""What a box is: host and GPU facts, firmware versions, xe events, preflight's judgement."""
