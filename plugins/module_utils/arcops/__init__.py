"""arcops helpers: hardware facts and checks for Intel Arc inference boxes.

Everything here uses only the standard library, because Ansible ships these modules to the
target host inside its modules (ansible.cfg puts ``src`` on the module_utils path).
Imports inside the package are relative for the same reason.
"""

__version__ = "1.1.0"
