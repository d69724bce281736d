"""Log driver settings -> docker run arguments, and every way they are refused. Pure."""

import pytest

from tritonops.logs.shipping import DRIVERS, LogSettingError, log_argv, log_shipping


def test_the_default_keeps_rotated_logs_on_the_host_without_blocking():
    shipping = log_shipping()
    assert (shipping.driver, shipping.ships, shipping.collector) == ("json-file", False, None)
    assert log_argv(shipping) == ("--log-driver", "json-file", "--log-opt", "mode=non-blocking",
                                  "--log-opt", "max-buffer-size=4m", "--log-opt", "max-size=50m",
                                  "--log-opt", "max-file=5", "--log-opt",
                                  "labels=tritonops.deployment,tritonops.release")


@pytest.mark.parametrize("driver, collector, key", [
    ("syslog", "udp://10.0.0.5:514", "syslog-address"), ("syslog", "tcp+tls://logs:6514", "syslog-address"),
    ("fluentd", "fluent.internal:24224", "fluentd-address"), ("gelf", "udp://graylog:12201", "gelf-address")])
def test_a_collector_becomes_the_drivers_address_option(driver, collector, key):
    shipping = log_shipping(driver, collector)
    assert shipping.ships and shipping.collector == collector and (key, collector) in shipping.options


def test_options_are_passed_and_booleans_spelt_as_docker_wants():
    shipping = log_shipping("fluentd", "tcp://f:24224", {"fluentd-async": True, "max-buffer-size": "8m"})
    assert dict(shipping.options)["fluentd-async"] == "true" and dict(shipping.options)["max-buffer-size"] == "8m"


@pytest.mark.parametrize("driver, collector, options, message", [
    ("splunk", None, {}, "log driver 'splunk' is not one tritonops ships with; allowed: " + ", ".join(DRIVERS)),
    ("syslog", None, {"syslog-adress": "tcp://x:1"}, "log option 'syslog-adress' is not one log driver syslog takes"),
    ("syslog", "http://x:514", {}, "is not an address the driver takes (tcp://, udp://"),
    ("syslog", "tcp://x:514;rm -rf /", {}, "is not an address"),
    ("json-file", "tcp://x:514", {}, "log driver json-file keeps logs on the host"),
    ("gelf", None, {}, "log driver gelf needs the collector's address"),
    ("json-file", None, {"mode": "sometimes"}, "mode is blocking or non-blocking"),
    ("syslog", "udp://x:514", {"tag": "a\nb"}, "control-character"),
    ("syslog", "udp://x:514", {"tag": 1.5}, "must be a string or a whole number"),
])
def test_bad_settings_are_refused_naming_what_is_allowed(driver, collector, options, message):
    with pytest.raises(LogSettingError) as err:
        log_shipping(driver, collector, options)
    assert message in str(err.value)


@pytest.mark.parametrize("kwargs, message", [
    ({"max_size": "lots"}, "log max size must be a size"), ({"max_file": 0}, "log max file"),
    ({"buffer_size": "-1m"}, "log buffer size")])
def test_rotation_and_buffer_sizes_are_checked(kwargs, message):
    with pytest.raises(LogSettingError, match=message):
        log_shipping(**kwargs)
