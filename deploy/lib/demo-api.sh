# kilnd's REST API for the demo scripts (demo-extras.sh, demo-oob.sh), sourced after common.sh.
# Needs KILN_URL and KILN_TOKEN (an admin token).

api() {  # METHOD PATH [JSON]
  curl -fsS -X "$1" -H "Authorization: Bearer $KILN_TOKEN" -H 'Content-Type: application/json' \
    ${3:+--data "$3"} "$KILN_URL$2"
}

# fresh_token ROLE NAME FILE [RUNNER]: a new token of ROLE in FILE (its id in FILE.id), for the
# out-of-band runner RUNNER when given; the one made by the previous start is revoked.
fresh_token() {
  local role=$1 name=$2 file=$3 runner=${4:-} created token token_id old
  created=$(api POST /api/v1/tokens "{\"role\":\"$role\",\"name\":\"$name\"${runner:+,\"runner\":\"$runner\"}}") \
    || die "cannot create a $role token"
  token=$(printf '%s' "$created" | sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
  token_id=$(printf '%s' "$created" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
  [ -n "$token" ] || die "no token in the answer: $created"
  if [ -f "$file.id" ]; then
    old=$(cat "$file.id")
    [ -n "$old" ] && [ "$old" != "$token_id" ] && api DELETE "/api/v1/tokens/$old" >/dev/null 2>&1 || true
  fi
  printf '%s\n' "$token" >"$file"
  printf '%s\n' "$token_id" >"$file.id"
}
