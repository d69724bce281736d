"""Every mistake in an inventory is reported at its file:line, with what to do."""

import os
import textwrap

import pytest

from tritonops.errors import InputError
from tritonops.inventory import load_inventory

CASES = {
    "yaml syntax": ({"hosts.yml": """
        all:
          hosts:
            h1:
              ansible_host: [unclosed
        """}, "hosts.yml:5", "invalid YAML"),
    "duplicate key": ({"hosts.yml": """
        all:
          hosts:
            h1:
            h1:
        """}, "hosts.yml:4", "duplicate key 'h1'"),
    "hosts is a list": ({"hosts.yml": """
        all:
          children:
            gpu:
              hosts:
                - g1
                - g2
        """}, "hosts.yml:4", "'hosts:' of group 'gpu' must be a mapping, not a list"),
    "host with a non-mapping value": ({"hosts.yml": """
        gpu:
          hosts:
            g1:
            g2: 10.0.0.2
        """}, "hosts.yml:4", "host 'g2' must map to its variables"),
    "group cycle": ({"hosts.yml": """
        all:
          children:
            a:
              children:
                b:
                  children:
                    c:
            c:
              children:
                a:
        """}, "hosts.yml:10", "group 'a' is its own ancestor (a -> b -> c -> a)"),
    "group is its own child": ({"hosts.yml": """
        gpu:
          children:
            gpu:
        """}, "hosts.yml:3", "group 'gpu' is its own ancestor"),
    "all as a child": ({"hosts.yml": """
        gpu:
          children:
            all:
        """}, "hosts.yml:3", "group 'all' cannot be a child of 'gpu'"),
    "section at top level": ({"hosts.yml": """
        # forgot 'all:'
        hosts:
          h1:
        """}, "hosts.yml:2", "unknown top-level key 'hosts'"),
    "unknown group key": ({"hosts.yml": """
        all:
          children:
            gpu:
              host:
                g1:
        """}, "hosts.yml:4", "unknown key 'host' in group 'gpu'"),
    "group body a list": ({"hosts.yml": """
        all:
          children:
            gpu: [g1, g2]
        """}, "hosts.yml:3", "group 'gpu' must be a mapping"),
    "top level a list": ({"hosts.yml": "- h1\n- h2\n"}, "hosts.yml:1", "mapping of group names"),
    "bad variable name": ({"hosts.yml": """
        all:
          vars:
            gpu-count: 8
        """}, "hosts.yml:3", "invalid variable name 'gpu-count'"),
    "bad host range": ({"hosts.yml": """
        all:
          hosts:
            node[9:1]:
        """}, "hosts.yml:3", "start is after end"),
    "vault": ({"hosts.yml": """
        all:
          vars:
            secret: !vault |
              not encrypted at all
        """}, "hosts.yml:3", "a !vault value must be Ansible Vault data"),
    "group priority not a number": ({"hosts.yml": """
        gpu:
          vars:
            ansible_group_priority: high
          hosts:
            g1:
        """}, "hosts.yml:3", "ansible_group_priority must be a whole number"),
    "ini bad header": ({"hosts.ini": "[gpu]\ng1\n[gpu vars]\n"}, "hosts.ini:3", "invalid section header"),
    "ini unknown section type": ({"hosts.ini": "[gpu]\ng1\n\n[gpu:variables]\n"}, "hosts.ini:4",
                                 "unknown section type ':variables'"),
    "ini vars without equals": ({"hosts.ini": "[gpu]\ng1\n[gpu:vars]\nmodel llama\n"}, "hosts.ini:4",
                                "expected key=value"),
    "ini host token without equals": ({"hosts.ini": "[gpu]\ng1 ansible_host=1.2.3.4 oops\n"}, "hosts.ini:2",
                                      "expected key=value, found 'oops'"),
    "ini vars of undeclared group": ({"hosts.ini": "[gpu]\ng1\n\n[cpu:vars]\nx=1\n"}, "hosts.ini:4",
                                     "section [cpu:vars] is for a group that is never declared"),
    "ini undeclared child": ({"hosts.ini": "[fleet:children]\ngpu\ncpu\n[gpu]\ng1\n"}, "hosts.ini:3",
                             "[fleet:children] names group 'cpu' that is never declared"),
    "ini unterminated quote": ({"hosts.ini": "[gpu]\ng1 model='llama\n"}, "hosts.ini:2", "unterminated quote"),
    "ini cycle": ({"hosts.ini": "[a:children]\nb\n[b:children]\na\n"}, "hosts.ini:4",
                  "group 'a' is its own ancestor (a -> b -> a)"),
    "group_vars not a mapping": ({"hosts.yml": "gpu:\n  hosts:\n    g1:\n",
                                  "group_vars/gpu.yml": "- just\n- a list\n"},
                                 "group_vars/gpu.yml:1", "must be a mapping"),
    "group_vars syntax": ({"hosts.yml": "gpu:\n  hosts:\n    g1:\n",
                           "group_vars/gpu/sizing.yml": "a: 1\nb: [1, 2\nc: 3\n"},
                          "group_vars/gpu/sizing.yml:3", "invalid YAML"),
    "host_vars unknown tritonops var": ({"hosts.yml": "gpu:\n  hosts:\n    g1:\n",
                                         "host_vars/g1.yml": "a: 1\ntritonops_tp: 2\n"},
                                        "host_vars/g1.yml:2", "unknown tritonops variable 'tritonops_tp'"),
}


@pytest.mark.parametrize("files, where, what", CASES.values(), ids=CASES.keys())
def test_error_names_file_and_line(tmp_path, monkeypatch, files, where, what):
    monkeypatch.chdir(tmp_path)
    for name, text in files.items():
        os.makedirs(os.path.dirname(name) or ".", exist_ok=True)
        with open(name, "w") as handle:
            handle.write(textwrap.dedent(text).lstrip("\n"))
    inventory = next(name for name in files if name.startswith("hosts"))
    with pytest.raises(InputError) as caught:
        load_inventory([inventory], ssh_config_file=os.devnull)
    assert caught.value.where == where
    assert what in caught.value.what
    assert str(caught.value).startswith(f"{where}: ")


def test_missing_inventory_path_is_named(tmp_path):
    missing = str(tmp_path / "nope.yml")
    with pytest.raises(InputError) as caught:
        load_inventory([missing], ssh_config_file=os.devnull)
    assert missing in str(caught.value)


def test_folder_without_inventory_files(tmp_path):
    (tmp_path / "notes.md").write_text("hi\n")
    with pytest.raises(InputError) as caught:
        load_inventory([str(tmp_path)], ssh_config_file=os.devnull)
    assert caught.value.where == str(tmp_path)
    assert "no inventory files" in caught.value.what


def test_no_paths_at_all():
    with pytest.raises(InputError, match="no inventory given"):
        load_inventory([], ssh_config_file=os.devnull)
