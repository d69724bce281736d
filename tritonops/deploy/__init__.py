"""deploy: the flow from inventory to a release on every host (lock, facts, plan, image, playbook)."""
