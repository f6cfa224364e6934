#!/bin/sh
echo "coverage merging is not available offline (stand-in remote_coverage_tools)" >&2
exit 1
