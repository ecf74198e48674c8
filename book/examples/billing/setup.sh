# Run by tests/integration/book.rs in its copy of this project, before the
# walkthroughs' commands: makes the copy a git repository whose `main` holds
# the zone bug and whose `fix-branch` fixes it (the walkthrough's `verify`).
# Fixed names and dates, so the commits are the same on every machine.
set -e
# The host's own git configuration (signing, hooks, templates) plays no part.
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=Ada GIT_AUTHOR_EMAIL=ada@example.org \
  GIT_COMMITTER_NAME=Ada GIT_COMMITTER_EMAIL=ada@example.org \
  GIT_AUTHOR_DATE='2026-03-02T12:00:00Z' GIT_COMMITTER_DATE='2026-03-02T12:00:00Z'
rm -f setup.sh
printf '.flakelab/\n' > .gitignore
git init -q -b main
git add -A
git commit -q -m 'Group the day'"'"'s invoices by date'
git checkout -q -b fix-branch
sed -i -e "s/t.astimezone().date()/t.astimezone(timezone.utc).date()/" -e "1a from datetime import timezone" billing/invoices.py
git commit -q -am 'Group invoices by their UTC date'
git checkout -q main
