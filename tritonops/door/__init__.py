"""The front door (issue #31): HAProxy on the balancer hosts, its runtime commands and what they answer."""
