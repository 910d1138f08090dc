# Writes the seed corpus (Fuzz/corpus/<target>/) and the dictionaries (Fuzz/dict/<target>.dict)
# of the fuzz targets, from real shapes: pages, specs, configs and answers as the engine and
# the Salesforce API write them. Run from the repository root: python3 Fuzz/seeds.py
import os, json
root = 'Fuzz'
def seed(t, name, data):
    d = f'{root}/corpus/{t}'; os.makedirs(d, exist_ok=True)
    if isinstance(data, str): data = data.encode()
    open(f'{d}/{name}', 'wb').write(data)
def dict_(t, words):
    with open(f'{root}/dict/{t}.dict', 'w') as f:
        f.write(f'# libFuzzer dictionary for the {t} target: tokens of the shapes it parses.\n')
        for w in words:
            b = w.encode('utf-8') if isinstance(w, str) else w
            if w == '\xff': b = b'\xff'
            f.write('"' + ''.join(chr(c) if 32 <= c < 127 and c not in (34, 92) else '\\x%02x' % c for c in b) + '"\n')

json_tokens = ['{', '}', '[', ']', ':', ',', '"', 'true', 'false', 'null', '-0', '1e308', '1.5', '-9223372036854775808',
               '9223372036854775808', '\\u0000', '\\ud83d\\ude00', '\\n', '\\"', '\\\\', '\\/', 'é', '\xff']
# query_page
rec = '{"attributes":{"type":"Account","url":"/services/data/v62.0/sobjects/Account/001A"},"Id":"001A","Name":"Acme","Amount":12.5,"LastModifiedDate":"2026-01-02T03:04:05.000+0000"}'
seed('query_page', 'plain', '{"totalSize":2,"done":true,"records":[' + rec + ',{"Id":"001B","Name":null,"Account":{"Name":"Parent","Id":"001P"},"Amount":-7}]}')
seed('query_page', 'next_page', '{"totalSize":4000,"done":false,"nextRecordsUrl":"/services/data/v62.0/query/01gD0000002HU6KIAW-2000","records":[' + rec + ']}')
seed('query_page', 'escapes', '{"records":[{"Id":"001\\u0041","Name":"A\\"c\\\\m\\/e\\n\\t\\ud83d\\ude00","a":{"b":{"c":"deep"}}}],"done":true}')
seed('query_page', 'unusual', '{"records":[{"Id":"1","Name":["x"],"Account":{"Name":{"k":1}},"__local__":true},{"Id":"2","Name":"n","Name":"dup"},{"Id":12345678901234567890}],"totalSize":3}')
seed('query_page', 'numbers', '{"records":[{"Id":"n","Amount":1e308,"a":{"b":{"c":-0.0}},"IsDeleted":false},{"Id":"m","Amount":-9223372036854775808},{"Id":"o","Amount":3.14159265358979323846264338327950288}],"done":true}')
seed('query_page', 'empty', '{"totalSize":0,"done":true,"records":[]}')
seed('query_page', 'unicode', '{"records":[{"Id":"ü","Name":"日本語","LastModifiedDate":"2026-13-45T99:99:99.000Z"}],"done":true}'.encode('utf-8'))
seed('query_page', 'dates', '{"records":[{"Id":"d1","LastModifiedDate":"2026-01-02T03:04:05Z"},{"Id":"d2","LastModifiedDate":"2026-01-02T03:04:05.123-0800"},{"Id":"d3","LastModifiedDate":12}],"done":true}')
dict_('query_page', json_tokens + ['"records"', '"totalSize"', '"done"', '"nextRecordsUrl"', '"attributes"', '"Id"', '"Name"', '"Account"', '"Amount"', '"LastModifiedDate"', '"IsDeleted"', '"a"', '"b"', '"c"', '"__local__"', '"_soupEntryId"', '"2026-01-02T03:04:05.000+0000"', 'Z', '+0000'])

# query_spec
for name, spec in {
    'exact': {"queryType": "exact", "indexPath": "Id", "matchKey": "001A", "pageSize": 5},
    'range': {"queryType": "range", "indexPath": "Amount", "beginKey": -10, "endKey": 100.5, "orderPath": "Count", "order": "descending", "pageSize": 2},
    'like': {"queryType": "like", "indexPath": "Name", "likeKey": "%c%", "selectPaths": ["Name", "Account.Name", "_soupEntryId"]},
    'match': {"queryType": "match", "indexPath": "Description", "matchKey": "rocket OR hammock"},
    'match_all': {"queryType": "match", "matchKey": "{accounts:Description}:skates"},
    'smart': {"queryType": "smart", "smartSql": "SELECT {accounts:Name}, count(*) FROM {accounts} GROUP BY {accounts:Name}", "pageSize": 3},
    'range_all': {"queryType": "range", "pageSize": 100000},
    'json1': {"queryType": "exact", "indexPath": "tags", "matchKey": "[\"a\",\"b\"]"},
    'unindexed': {"queryType": "exact", "indexPath": "items.sku", "matchKey": True, "orderPath": "Unindexed.path"},
}.items():
    seed('query_spec', name, json.dumps(spec))
dict_('query_spec', json_tokens + ['"queryType"', '"exact"', '"range"', '"like"', '"match"', '"smart"', '"indexPath"', '"matchKey"', '"beginKey"', '"endKey"', '"likeKey"', '"smartSql"', '"orderPath"', '"order"', '"ascending"', '"descending"', '"pageSize"', '"selectPaths"', '"timeoutMs"', '"Id"', '"Name"', '"Amount"', '"Count"', '"Account.Name"', '"tags"', '"Description"', '"items.sku"', '"_soup"', '"_soupEntryId"', '"_soupLastModifiedDate"', '%', '*', 'OR', 'NEAR'])

# smart_sql
for name, sql in {
    'select': 'SELECT {accounts:Name}, {accounts:Amount} FROM {accounts} WHERE {accounts:Count} > 0 ORDER BY {accounts:Name}',
    'soup': 'SELECT {accounts:_soup} FROM {accounts}',
    'join': 'SELECT a.{accounts:Name}, c.{contacts:LastName} FROM {accounts} AS a JOIN {contacts} AS c ON c.{contacts:AccountId} = a.{accounts:Id}',
    'aggregate': 'SELECT count(*), sum({accounts:Amount}), max({accounts:_soupEntryId}) FROM {accounts}',
    'fts': 'SELECT {contacts:_soupEntryId} FROM {contacts} WHERE {contacts:LastName} MATCH \'Doe\'',
    'cte': 'WITH x AS (SELECT {accounts:Name} AS n FROM {accounts}) SELECT n FROM x',
    'json': "SELECT json_extract({accounts:_soup}, '$.Account.Name') FROM {accounts}",
    'write': 'DELETE FROM {accounts}',
    'pragma': 'SELECT * FROM pragma_table_info(\'sqlite_master\')',
    'attach': "ATTACH DATABASE '/tmp/x.db' AS x",
    'recursive': 'WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r) SELECT i FROM r',
    'two': 'SELECT 1; DELETE FROM {accounts}',
    'unknown': 'SELECT {nosoup:Name} FROM {nosoup}',
    'path_quotes': 'SELECT {accounts:a\'b"c} FROM {accounts}',
}.items():
    seed('smart_sql', name, sql)
dict_('smart_sql', ['{accounts:', '{contacts:', '{accounts}', '{contacts}', 'Name}', '_soup}', '_soupEntryId}', '_soupLastModifiedDate}', 'Amount}', 'AccountId}', 'LastName}',
    'SELECT ', ' FROM ', ' WHERE ', ' JOIN ', ' ON ', ' GROUP BY ', ' ORDER BY ', ' LIMIT ', ' UNION ALL ', 'WITH ', 'RECURSIVE ', ' MATCH ', 'count(*)', 'json_extract(', 'json_each(', 'pragma_', 'load_extension(', 'fts3_tokenizer(',
    'INSERT INTO ', 'UPDATE ', 'DELETE FROM ', 'DROP TABLE ', 'CREATE ', 'ATTACH ', 'PRAGMA ', 'VACUUM', 'sqlite_master', ';', "'", '"', '(', ')', ',', '*', '--', '/*', '?', ':a', '@a', '$a'])

# index_specs
seed('index_specs', 'all_types', '[{"path":"Id","type":"string"},{"path":"n","type":"integer"},{"path":"f","type":"floating"},{"path":"t","type":"full_text"},{"path":"j","type":"json1"}]\n[{"path":"Id","type":"string"},{"path":"Account.Name","type":"string"},{"path":"f","type":"json1"}]')
seed('index_specs', 'nested', '[{"path":"Account.Name","type":"string"},{"path":"items.sku","type":"full_text"},{"path":"a b.c\'d","type":"integer"}]')
seed('index_specs', 'bad', '[{"path":"x..y","type":"string"}]\n[]')
seed('index_specs', 'dup', '[{"path":"Id","type":"string"},{"path":"Id","type":"integer"}]')
seed('index_specs', 'alter_drop', '[{"path":"Name","type":"string"},{"path":"Amount","type":"floating"}]\n[{"path":"Name","type":"integer"}]')
dict_('index_specs', json_tokens + ['"path"', '"type"', '"string"', '"integer"', '"floating"', '"full_text"', '"json1"', '"Id"', '"Name"', '"Account.Name"', '"items.sku"', '"_soup"', '"_soupEntryId"', '"_soupLastModifiedDate"', '.', '..', "'", '\\n'])

# upsert
seed('upsert', 'create', '\n[{"Id":"002A","Name":"New","Amount":1.5},{"Name":"NoId"}]')
seed('upsert', 'external_id', 'Id\n[{"Id":"001A","Name":"Updated","Count":7},{"Id":"009Z","Name":"Created"}]')
seed('upsert', 'nested_external', 'Account.Name\n{"Account":{"Name":"Parent"},"Name":"ByParent"}')
seed('upsert', 'entry_id', '\n[{"_soupEntryId":1,"Name":"Same"},{"_soupEntryId":999}]')
seed('upsert', 'array_path', 'items.sku\n[{"items":[{"sku":"x1"}],"Name":"arr"}]')
seed('upsert', 'types', '\n[{"Id":true,"Amount":"12","Count":1e3,"tags":{"k":[1,2]},"Description":"full text words"},{"Id":null,"Name":-0}]')
seed('upsert', 'unindexed_external', 'Unindexed\n[{"Unindexed":"1"}]')
seed('upsert', 'flags', 'Id\n[{"Id":"001A","__local__":true,"__locally_updated__":"1","__sync_create_sent__":{"at":1}}]')
dict_('upsert', json_tokens + ['Id\n', 'Account.Name\n', 'items.sku\n', '_soupEntryId\n', '\n', '"Id"', '"Name"', '"Amount"', '"Count"', '"Account"', '"tags"', '"Description"', '"items"', '"sku"', '"_soupEntryId"', '"_soupLastModifiedDate"', '"__local__"', '"__locally_created__"', '"__locally_updated__"', '"__locally_deleted__"', '"__sync_create_sent__"', '"001A"'])

# store_config
seed('store_config', 'userstore', '{"soups":[{"soupName":"contacts","indexes":[{"path":"Id","type":"string"},{"path":"LastName","type":"full_text"}]},{"soupName":"accounts","indexes":[{"path":"Id","type":"string"}]}]}')
seed('store_config', 'open_config', '{"isGlobalStore":true,"storeName":"my.store-1","kdfIter":4000}')
seed('store_config', 'keyed', '{"storeName":"enc","key":"x\'000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\'"}')
seed('store_config', 'passphrase', '{"key":"secret","kdfIter":null,"isGlobalStore":false}')
seed('store_config', 'read_only', '{"storeName":"main","readOnly":true}')
seed('store_config', 'bool', 'true')
seed('store_config', 'bad_name', '{"storeName":"../x"}')
seed('store_config', 'soups_bad', '{"soups":[{"soupName":"ok","indexes":[{"path":"a","type":"string"}]},{"soupName":"","indexes":[]}]}')
dict_('store_config', json_tokens + ['"soups"', '"soupName"', '"indexes"', '"path"', '"type"', '"string"', '"integer"', '"floating"', '"full_text"', '"json1"', '"isGlobalStore"', '"storeName"', '"key"', '"kdfIter"', '"readOnly"', "x'", "'", '0123456789abcdef', '..', '/'])

# sync_config
seed('sync_config', 'usersyncs', json.dumps({"syncs": [
    {"syncName": "down", "syncType": "syncDown", "soupName": "accounts", "target": {"type": "soql", "query": "SELECT Id, Name, LastModifiedDate FROM Account"}, "options": {"mergeMode": "OVERWRITE"}},
    {"syncName": "up", "syncType": "syncUp", "soupName": "accounts", "target": {"createFieldlist": ["Name"]}, "options": {"fieldlist": ["Name"], "mergeMode": "LEAVE_IF_CHANGED"}}]}))
seed('sync_config', 'bad_type', '{"syncs":[{"syncName":"x","syncType":"sideways","soupName":"accounts"}]}')
seed('sync_config', 'second_bad', '{"syncs":[{"syncName":"a","syncType":"syncUp","soupName":"accounts"},{"syncName":"b","syncType":"syncDown","soupName":"accounts","target":{"type":"nope"}}]}')
seed('sync_config', 'missing_soup', '{"syncs":[{"syncName":"a","syncType":"syncUp","soupName":"nosuch"}]}')
dict_('sync_config', json_tokens + ['"syncs"', '"syncName"', '"syncType"', '"syncDown"', '"syncUp"', '"soupName"', '"accounts"', '"target"', '"options"', '"type"', '"soql"', '"sosl"', '"mru"', '"refresh"', '"parent_children"', '"briefcase"', '"layout"', '"metadata"', '"query"', '"mergeMode"', '"OVERWRITE"', '"LEAVE_IF_CHANGED"', '"fieldlist"', '"createFieldlist"', '"updateFieldlist"', '"idFieldName"', '"modificationDateFieldName"', '"sobjectType"'])

# sync_target: byte0 bit0 = up, bit1 = named; then options line, then target
targets_down = {
    'soql': {"type": "soql", "query": "SELECT Id, Name, LastModifiedDate FROM Account WHERE Name LIKE 'A%' ORDER BY Name LIMIT 10", "maxBatchSize": 500},
    'soql_implicit': {"query": "SELECT Id FROM Account"},
    'sosl': {"type": "sosl", "query": "FIND {Acme} IN ALL FIELDS RETURNING Account(Id, Name)"},
    'mru': {"type": "mru", "sobjectType": "Account", "fieldlist": ["Id", "Name"]},
    'refresh': {"type": "refresh", "sobjectType": "Account", "fieldlist": ["Name"], "soupName": "accounts"},
    'parent_children': json.loads('{"type":"parent_children","parent":{"sobjectType":"Account","soupName":"accounts"},"parentFieldlist":["Id","Name"],"parentSoqlFilter":"Name != null","children":{"sobjectType":"Contact","sobjectTypePlural":"Contacts","soupName":"accounts","parentIdFieldName":"AccountId"},"childrenFieldlist":["LastName"],"relationshipType":"MASTER_DETAIL"}'),
    'briefcase': {"type": "briefcase", "infos": [{"sobjectType": "Account", "fieldlist": ["Name"], "soupName": "accounts"}]},
    'layout': {"type": "layout", "sobjectType": "Account", "layoutType": "Full", "mode": "Edit", "formFactor": "Large", "recordTypeId": "012000000000000AAA"},
    'metadata': {"type": "metadata", "sobjectType": "Account", "idFieldName": "Id", "modificationDateFieldName": "LastModifiedDate"},
}
for name, t in targets_down.items():
    seed('sync_target', 'down_' + name, b'\x00' + b'{"mergeMode":"LEAVE_IF_CHANGED","fieldlist":["Id","Name"]}\n' + json.dumps(t).encode())
for name, t in {
    'collection': {"type": "collection", "createFieldlist": ["Name"], "updateFieldlist": ["Name", "Amount"], "maxBatchSize": 50},
    'single': {"type": "single", "externalIdFieldName": "Ext__c", "sobjectType": "Account"},
    'parent_children': json.loads('{"type":"parent_children","parent":{"sobjectType":"Account","soupName":"accounts"},"children":{"sobjectType":"Contact","soupName":"accounts","parentIdFieldName":"AccountId"},"parentCreateFieldlist":["Name"]}'),
}.items():
    seed('sync_target', 'up_' + name, b'\x03' + b'\n' + json.dumps(t).encode())
seed('sync_target', 'up_default', b'\x01null\n')
dict_('sync_target', json_tokens + ['\x00', '\x01', '\x02', '\x03', '\n', '"type"', '"soql"', '"sosl"', '"mru"', '"refresh"', '"parent_children"', '"briefcase"', '"layout"', '"metadata"', '"collection"', '"single"', '"query"', '"sobjectType"', '"sobjectTypePlural"', '"fieldlist"', '"soupName"', '"parent"', '"children"', '"parentFieldlist"', '"childrenFieldlist"', '"parentIdFieldName"', '"parentSoqlFilter"', '"relationshipType"', '"MASTER_DETAIL"', '"LOOKUP"', '"infos"', '"layoutType"', '"mode"', '"formFactor"', '"recordTypeId"', '"idFieldName"', '"modificationDateFieldName"', '"maxBatchSize"', '"createFieldlist"', '"updateFieldlist"', '"externalIdFieldName"', '"mergeMode"', '"OVERWRITE"', '"LEAVE_IF_CHANGED"', '"accounts"', 'SELECT ', ' FROM ', ' WHERE ', 'LastModifiedDate', ' LIMIT ', ' ORDER BY ', 'FIND {'])

# remote_config
seed('remote_config', 'full', json.dumps({"instanceUrl": "https://example.my.salesforce.com/", "accessToken": "00D!abc", "apiVersion": "v62.0", "refreshToken": "5Aep", "tokenUrl": "https://login.salesforce.com/services/oauth2/token", "clientId": "3MVG", "clientSecret": "s", "caBundle": "/etc/ssl/certs/ca.pem", "verifyTls": True, "connectTimeoutMs": 5000, "stallTimeoutMs": 30000, "maxAttempts": 3, "retryBaseDelayMs": 200, "createSettleMs": 10000}))
seed('remote_config', 'local', '{"instanceUrl":"http://127.0.0.1:8080","accessToken":"t","apiVersion":"61.0"}')
seed('remote_config', 'bad_version', '{"instanceUrl":"http://127.0.0.1","accessToken":"t","apiVersion":"v1..2"}')
seed('remote_config', 'ranges', '{"instanceUrl":"https://x","accessToken":"t","maxAttempts":11,"stallTimeoutMs":999}')
dict_('remote_config', json_tokens + ['"instanceUrl"', '"accessToken"', '"apiVersion"', '"refreshToken"', '"tokenUrl"', '"clientId"', '"clientSecret"', '"caBundle"', '"verifyTls"', '"connectTimeoutMs"', '"stallTimeoutMs"', '"maxAttempts"', '"retryBaseDelayMs"', '"createSettleMs"', '"http://', '"https://', '127.0.0.1', '/', '?', '#', '%', 'v62.0', '.', '٣', '½'])

# rest_answers: byte0 = run, answers separated by \n--8<--\n, each: status selector byte + body
CUT = b'\n--8<--\n'
S = {200: 0, 201: 1, 204: 2, 400: 3, 401: 4, 403: 5, 404: 6, 409: 7, 412: 8, 500: 9}
def ans(status, body): return bytes([S[status]]) + (body.encode() if isinstance(body, str) else body)
def rest(name, run, *answers): seed('rest_answers', name, bytes([run]) + CUT.join(answers))
qpage = '{"totalSize":2,"done":true,"records":[{"attributes":{"type":"Account"},"Id":"001A","Name":"Server","LastModifiedDate":"2026-01-02T03:04:05.000+0000"},{"Id":"001X","Name":"New","LastModifiedDate":"2026-01-03T00:00:00.000Z"}]}'
err = '[{"message":"Session expired or invalid","errorCode":"INVALID_SESSION_ID"}]'
rest('soql_pages', 0, ans(200, '{"totalSize":3,"done":false,"nextRecordsUrl":"/services/data/v62.0/query/01g-2","records":[{"Id":"001Q","Name":"p1"}]}'), ans(200, qpage))
rest('soql_refresh', 0, ans(401, err), ans(200, '{"access_token":"t1","instance_url":"","token_type":"Bearer"}'), ans(200, qpage))
rest('soql_error', 0, ans(400, '[{"message":"No such column \'Foo\' on entity \'Account\'","errorCode":"INVALID_FIELD"}]'))
rest('mru', 1, ans(200, '{"objectDescribe":{"name":"Account"},"recentItems":[{"Id":"001A","Name":"Acme"},{"Id":"001B"}]}'), ans(200, qpage))
rest('sosl', 2, ans(200, '{"searchRecords":[{"attributes":{"type":"Account"},"Id":"001A","Name":"Acme"}]}'))
rest('describe', 3, ans(200, '{"name":"Account","label":"Account","fields":[{"name":"Id","type":"id"}],"childRelationships":[],"urls":{}}'))
rest('layout', 4, ans(200, '{"id":"00h","layoutType":"Compact","mode":"View","sections":[{"heading":"x","layoutRows":[]}]}'))
rest('briefcase', 5, ans(200, '{"primingRecords":{"brief":{"Account":[{"objectId":"001A","systemModstamp":"2026-01-02T03:04:05.000Z"}]}},"relayToken":null,"stats":{}}'), ans(200, '[{"attributes":{"type":"Account"},"Id":"001A","Name":"B","LastModifiedDate":"2026-01-02T03:04:05.000+0000"}]'))
rest('parent_children_down', 6, ans(200, '{"totalSize":1,"done":true,"records":[{"Id":"001A","Name":"P","LastModifiedDate":"2026-01-02T03:04:05.000+0000","Contacts":{"totalSize":1,"done":true,"records":[{"Id":"003A","LastName":"C","AccountId":"001A","LastModifiedDate":"2026-01-02T03:04:05.000+0000"}]}}]}'))
rest('collection_up', 7, ans(200, '[{"id":"001N","success":true,"errors":[]}]'), ans(200, '[{"id":"001A","success":true,"errors":[]}]'), ans(200, '[{"id":"001B","success":false,"errors":[{"statusCode":"ENTITY_IS_DELETED","message":"entity is deleted","fields":[]}]}]'))
rest('collection_up_errors', 7, ans(400, '[{"message":"bad","errorCode":"JSON_PARSER_ERROR"}]'), ans(500, 'not json'), ans(200, '{"unexpected":"object"}'))
rest('single_up', 8, ans(200, '{"totalSize":1,"done":true,"records":[{"Id":"001A","LastModifiedDate":"2026-01-02T03:04:05.000+0000"}]}'), ans(201, '{"id":"001N","success":true,"errors":[]}'), ans(204, ''), ans(404, '[{"errorCode":"NOT_FOUND","message":"gone"}]'))
rest('composite_up', 9, ans(200, '{"compositeResponse":[{"body":{"id":"001N","success":true,"errors":[]},"httpHeaders":{},"httpStatusCode":201,"referenceId":"refParent"},{"body":[{"errorCode":"REQUIRED_FIELD_MISSING","message":"x"}],"httpHeaders":{},"httpStatusCode":400,"referenceId":"refChild0"}]}'))
rest('upsert_external', 10, ans(200, '[{"id":"001N","success":true,"created":true,"errors":[]},{"success":false,"errors":[{"statusCode":"DUPLICATE_VALUE","message":"dup"}]}]'))
rest('token_refused', 7, ans(401, err), ans(400, '{"error":"invalid_grant","error_description":"expired access/refresh token"}'))
# byte0 >= 128: the sync down runs again with every key of the answers spelled with \u escapes
deep = '{"Id":"001D","Name":"deep","LastModifiedDate":"2026-01-02T03:04:05.000+0000","x":' + '[' * 2040 + '1' + ']' * 2040 + '}'
rest('soql_escaped', 132, ans(200, qpage))
rest('soql_escaped_deep', 132, ans(200, '{"totalSize":2,"done":true,"records":[{"Id":"001A","Name":"ok"},' + deep + ']}'))
rest('parent_children_escaped', 138, ans(200, '{"totalSize":1,"done":true,"records":[{"Id":"001A","Name":"P","LastModifiedDate":"2026-01-02T03:04:05.000+0000","Contacts":{"totalSize":1,"done":true,"records":[{"Id":"003A","LastName":"C","AccountId":"001A","LastModifiedDate":"2026-01-02T03:04:05.000+0000"}]}}]}'))
dict_('rest_answers', json_tokens + ['\n--8<--\n', '\x00', '\x01', '\x02', '\x03', '\x04', '\x06', '\x09', '"records"', '"totalSize"', '"done"', '"nextRecordsUrl"', '"/services/data/v62.0/query/01g-2"', '"Id"', '"Name"', '"LastModifiedDate"', '"2026-01-02T03:04:05.000+0000"', '"attributes"', '"type"', '"id"', '"success"', '"errors"', '"statusCode"', '"message"', '"errorCode"', '"fields"', '"created"', '"compositeResponse"', '"body"', '"httpStatusCode"', '"referenceId"', '"httpHeaders"', '"refParent"', '"refChild0"', '"access_token"', '"instance_url"', '"error"', '"error_description"', '"recentItems"', '"searchRecords"', '"primingRecords"', '"relayToken"', '"objectId"', '"systemModstamp"', '"Contacts"', '"AccountId"', '"LastName"', '"name"', '"layoutType"'])

# codec: byte0 % 6 = mode
import struct
seed('codec', 'flip_db', b'\x00' + struct.pack('<III', 5, 4096 * 8 * 2 + 100, 4096 * 8 * 3 - 1))
seed('codec', 'flip_db_header', b'\x00' + struct.pack('<I', 16 * 8 + 3))
seed('codec', 'flip_wal', b'\x01' + struct.pack('<II', (32 + 24 + 10) * 8, (32 + 4120 * 2 + 30) * 8))
seed('codec', 'flip_wal_header', b'\x01' + struct.pack('<I', 9 * 8))
seed('codec', 'flip_wal_last', b'\x01' + struct.pack('<I', 0xFFFFFFF0))
seed('codec', 'page', b'\x02\x02' + bytes(range(256)))
seed('codec', 'frame', b'\x03\x01' + b'\x00')
seed('codec', 'whole_db', b'\x04' + b'SQLite format 3\x00' + bytes(200))
seed('codec', 'whole_wal', b'\x05' + bytes.fromhex('377f0682002de21800001000') + bytes(100))
dict_('codec', ['\x00', '\x01', '\x02', '\x03', '\x04', '\x05', 'SQLite format 3\x00', '\x37\x7f\x06\x82', '\x37\x7f\x06\x83', '\x00\x10\x00\x00', '\x10\x00', '\x50', '\xff\xff\xff\xff'])

# plugin: "service action" then the args array, from the shared case table of the hybrid plugins
short = {'com.salesforce.smartstore': 'smartstore', 'com.salesforce.mobilesync': 'mobilesync',
         'com.salesforce.oauth': 'oauth', 'com.salesforce.network': 'network'}
cases = json.load(open('Tests/plugin/cases.json'))
for i, step in enumerate(cases['steps']):
    if step['kind'] != 'exec' or step['action'] in ('syncDown', 'syncUp', 'reSync', 'cleanResyncGhosts'):
        continue
    args = json.dumps(step['args']).replace('"$cursor.cursorId"', '1').replace('"$down._soupEntryId"', '1')
    seed('plugin', f'{i:02d}-{step["action"]}', f'{short.get(step["service"], step["service"])} {step["action"]}\n{args}')
dict_('plugin', json_tokens + ['smartstore ', 'mobilesync ', 'oauth ', 'network ', '"pluginSDKVersion:13.0.2"', '"soupName"',
      '"accounts"', '"indexes"', '"path"', '"type"', '"string"', '"full_text"', '"json1"', '"integer"', '"floating"', '"entries"',
      '"externalIdPath"', '"_soupEntryId"', '"querySpec"', '"queryType"', '"exact"', '"range"', '"like"', '"match"', '"smart"',
      '"indexPath"', '"matchKey"', '"beginKey"', '"endKey"', '"likeKey"', '"smartSql"', '"orderPath"', '"order"', '"pageSize"',
      '"selectPaths"', '"entryIds"', '"cursorId"', '"index"', '"isGlobalStore"', '"storeName"', '"reIndexData"', '"paths"',
      '"syncId"', '"syncName"', '"endPoint"', '"method"', '"queryParams"', '"headerParams"', '"returnBinary"',
      'pgRegisterSoup', 'pgQuerySoup', 'pgRunSmartQuery', 'pgUpsertSoupEntries', 'pgRemoveFromSoup', 'pgMoveCursorToPageIndex',
      'pgAlterSoup', 'pgReIndexSoup', 'pgGetAllStores', 'pgRemoveStore', 'getSyncStatus', 'deleteSync', 'pgSendRequest',
      'getAuthCredentials', '{accounts:Name}', 'select '])
