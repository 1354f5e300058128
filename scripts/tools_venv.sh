# Sourced by scripts/docs_check.sh, workflows_check.sh and dist_check.sh: the virtual environment
# their tools are installed into (build/venv-tools, made with `python` if missing), so that they
# change nothing in the interpreter the tests run on.  Sets TOOLS to its python.
tools_dir=${FASTCOPY_TOOLS_VENV:-build/venv-tools}
if [ ! -x "$tools_dir/bin/python" ]; then
    python -m venv "$tools_dir"
    "$tools_dir/bin/python" -m pip install -q --upgrade pip
fi
TOOLS=$tools_dir/bin/python
export NO_MKDOCS_2_WARNING=1
