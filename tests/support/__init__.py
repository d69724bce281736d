"""What several test files share: paths, hosts' facts, fake replicas and balancers, the helpers a JSON case or a
fuzzer needs. Nothing here is collected as a test; import it as `from tests.support.<module> import ...`."""
