import Foundation
import SyncStoreSupport

/// Deterministic, realistic sample data for `--seed Type=N,...` and `--import FILE`.

/// SplitMix64: tiny, seedable, identical on every platform.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func int(_ n: Int) -> Int { n <= 0 ? 0 : Int(next() % UInt64(n)) }
    mutating func chance(_ p: Double) -> Bool { Double(next() % 1_000_000) / 1_000_000 < p }
    mutating func pick<T>(_ a: [T]) -> T { a[int(a.count)] }
}

/// Stable across runs (Swift's Hasher is randomly seeded).
func fnv1a(_ s: String) -> UInt64 {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for b in s.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
    return h
}

enum SampleData {
    static let firstNames = ["James", "Mary", "Robert", "Patricia", "John", "Jennifer", "Michael", "Linda", "David", "Elizabeth", "William", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah", "Carlos", "Ana", "Luis", "Maria", "Wei", "Yuki", "Amit", "Priya", "Olga", "Ivan", "Fatima", "Omar", "Chloé", "José"]
    static let lastNames = ["Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez", "Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin", "Lee", "Perez", "Thompson", "White", "Harris", "Sanchez", "Clark", "Lewis", "Nakamura", "Silva", "O'Brien", "Müller"]
    static let companyWords = ["Acme", "Globex", "Initech", "Umbrella", "Stark", "Wayne", "Hooli", "Vandelay", "Soylent", "Tyrell", "Cyberdyne", "Wonka", "Aperture", "Oscorp", "Nakatomi", "Massive", "Blue Sun", "Monarch"]
    static let companySuffixes = ["Inc", "LLC", "Corp", "Group", "Holdings", "Labs", "Systems", "Partners"]
    static let titles = ["CEO", "CFO", "VP Sales", "Sales Manager", "Account Executive", "Engineer", "Senior Engineer", "Product Manager", "Buyer", "Director of Operations", "Analyst", "Consultant"]
    static let departments = ["Sales", "Marketing", "Engineering", "Finance", "Operations", "Support", "Procurement", "Legal"]
    static let cities = ["San Francisco", "New York", "Chicago", "Austin", "Seattle", "London", "Paris", "Berlin", "São Paulo", "Lisbon", "Tokyo", "Sydney", "Toronto", "Mumbai"]
    static let countries = ["USA", "USA", "USA", "UK", "France", "Germany", "Brazil", "Portugal", "Japan", "Australia", "Canada", "India"]
    /// Lower-case ASCII forms for e-mail local parts and host names.
    static let emailNames = firstNames.map { $0.lowercased().replacingOccurrences(of: "é", with: "e") }
    static let hostWords = companyWords.map { $0.lowercased().replacingOccurrences(of: " ", with: "") }
    static let words = ["quick", "reliable", "offline", "sync", "priority", "renewal", "pilot", "expansion", "urgent", "follow-up", "quarterly", "review", "widget", "shipment", "contract", "demo"]
}

struct Seeder {
    let store: Store

    /// Parses `Contact=100000,Account=1000`.
    static func parseSpec(_ spec: String, schema: Schema) throws -> [(SObjectDef, Int)] {
        var out: [(SObjectDef, Int)] = []
        for part in spec.split(separator: ",") {
            let kv = part.split(separator: "=", maxSplits: 1).map { String($0).trimmingCharacters(in: .whitespaces) }
            guard kv.count == 2, let n = Int(kv[1]), n >= 0, n <= 10_000_000 else {
                throw SchemaError(description: "--seed: expected Type=Count[,Type=Count...], got '\(part)'")
            }
            guard let obj = schema.object(kv[0]) else { throw SchemaError(description: "--seed: unknown sObject type '\(kv[0])'") }
            out.append((obj, n))
        }
        // Parents before children so lookups can point at seeded parents (a topological order;
        // cycles and self-lookups fall back to the order given).
        var ordered: [(SObjectDef, Int)] = []
        var pending = out
        while !pending.isEmpty {
            let ready = pending.firstIndex { item in
                !pending.contains { other in other.0.name != item.0.name && dependsOn(item.0, other.0) }
            } ?? 0
            ordered.append(pending.remove(at: ready))
        }
        return ordered
    }

    private static func dependsOn(_ child: SObjectDef, _ parent: SObjectDef) -> Bool {
        child.fields.contains { $0.type == .reference && $0.referenceTo?.lowercased() == parent.name.lowercased() }
    }

    /// Seeds a type only while its table is empty, so restarting on a `--db` file adds nothing.
    func seed(_ obj: SObjectDef, count: Int) throws -> Int {
        guard count > 0, try store.count(obj) == 0 else { return 0 }
        var rng = SplitMix64(seed: fnv1a(obj.name))
        var parentIds: [String: [String]] = [:]
        for f in obj.fields where f.type == .reference {
            guard let target = f.referenceTo.flatMap({ store.schema.object($0) }) else { continue }
            let s = try store.db.prepare("SELECT \"Id\" FROM \(target.tableName) WHERE \"IsDeleted\" = 0 ORDER BY seq", cached: false)
            var ids: [String] = []
            while try s.step() { if let id = s.optionalText(0) { ids.append(id) } }
            parentIds[f.name] = ids
        }
        let roles = obj.fields.filter { !$0.system && $0.createable }.map { ($0, role($0, obj: obj)) }
        // Fixed base time: seeds must not depend on the clock. Seeded rows may share a
        // LastModifiedDate (as bulk-loaded rows do in real orgs); API writes never do.
        let base = Int64(CivilDate.days(year: 2025, month: 1, day: 1)) * 86_400_000 + Int64(fnv1a(obj.name) % 1000)
        var maxStamp: Int64 = 0
        // One transaction, so one GAP_OVERFLOW event instead of `count` CREATE events past the
        // events' overflow threshold (ChangeEvents).
        try store.db.savepoint {
            store.events.expectBulk([obj.name], count: count)
            for i in 0..<count {
                var values: [(FieldDef, SQLValue)] = []
                for (f, role) in roles { values.append((f, value(for: f, role: role, obj: obj, index: i, rng: &rng, parents: parentIds[f.name] ?? []))) }
                let created = base + Int64(i) * 1000
                let modified = created + Int64(rng.int(4)) * 1000
                maxStamp = max(maxStamp, modified)
                try store.create(obj, values: values, created: SFTime.format(millis: created), modified: SFTime.format(millis: modified), track: false,
                                 sameColumnsAs: "seed:\(obj.name)")
            }
        }
        store.clock.advance(past: maxStamp)
        return count
    }

    /// What a field's seeded values look like, decided once per field (not per row: string
    /// matching on every row dominated seeding time).
    private enum Role {
        case externalId, firstName, lastName, title, department, city, country, number, accountName, name, birthdate, other
    }

    private func role(_ f: FieldDef, obj: SObjectDef) -> Role {
        let name = f.name.lowercased()
        if f.type == .date { return name.contains("birth") ? .birthdate : .other }
        guard f.type == .string else { return .other }
        if f.externalId { return .externalId }
        if name == "firstname" { return .firstName }
        if name == "lastname" { return .lastName }
        if name.contains("title") { return .title }
        if name.contains("department") { return .department }
        if name.contains("city") { return .city }
        if name.contains("country") { return .country }
        if name.contains("number") { return .number }
        if f.nameField { return obj.name == "Account" ? .accountName : .name }
        return .other
    }

    private func value(for f: FieldDef, role: Role, obj: SObjectDef, index i: Int, rng: inout SplitMix64, parents: [String]) -> SQLValue {
        let optional = f.nillable && !f.externalId && !f.nameField
        if optional && f.type != .boolean && rng.chance(0.08) { return .null }
        switch f.type {
        case .reference:
            return parents.isEmpty ? .null : .text(rng.pick(parents))
        case .boolean:
            return .int(rng.chance(0.3) ? 1 : 0)
        case .int:
            return .int(Int64(1 + rng.int(10_000)))
        case .double:
            return .real(Double(rng.int(100_000)) / 100)
        case .currency:
            return .real(Double(1000 + rng.int(5_000_000)))
        case .percent:
            return .real(Double(rng.int(11) * 10))
        case .date:
            let year = role == .birthdate ? 1950 + rng.int(50) : 2024 + rng.int(3)
            return .text(Timestamp.formatDate(days: CivilDate.days(year: year, month: 1 + rng.int(12), day: 1 + rng.int(28))))
        case .datetime:
            return .text(SFTime.format(millis: Int64(CivilDate.days(year: 2024 + rng.int(2), month: 1 + rng.int(12), day: 1 + rng.int(28))) * 86_400_000))
        case .picklist:
            return .text(f.picklistValues.isEmpty ? "Value \(rng.int(5))" : rng.pick(f.picklistValues))
        case .email:
            return .text("\(rng.pick(SampleData.emailNames)).\(i)@example.com")
        case .phone:
            return .text("(555) \(100 + rng.int(900))-\(1000 + rng.int(9000))")
        case .url:
            return .text("https://www.\(rng.pick(SampleData.hostWords))\(i).example.com")
        case .textarea:
            return .text((0..<(3 + rng.int(8))).map { _ in rng.pick(SampleData.words) }.joined(separator: " "))
        case .string:
            switch role {
            case .externalId: return .text(clip("EXT-\(obj.name)-\(i)", f))
            case .firstName: return .text(rng.pick(SampleData.firstNames))
            case .lastName: return .text(rng.pick(SampleData.lastNames))
            case .title: return .text(rng.pick(SampleData.titles))
            case .department: return .text(rng.pick(SampleData.departments))
            case .city: return .text(rng.pick(SampleData.cities))
            case .country: return .text(rng.pick(SampleData.countries))
            case .number: return .text(clip("AC-\(100_000 + i)", f))
            case .accountName: return .text(clip("\(rng.pick(SampleData.companyWords)) \(rng.pick(SampleData.companySuffixes)) \(i)", f))
            case .name: return .text(clip("\(obj.label) \(i) \(rng.pick(SampleData.words))", f))
            case .birthdate, .other: return .text(clip("\(rng.pick(SampleData.words)) \(i)", f))
            }
        case .id:
            return .null
        }
    }

    private func clip(_ s: String, _ f: FieldDef) -> String { String(s.prefix(max(f.length, 1))) }

    /// `--import FILE`: `{"Account": [{...}], "Contact": [...]}`; records may carry `Id`,
    /// `CreatedDate` and `LastModifiedDate`. Lookups may point at ids imported earlier in the file.
    func importFile(_ json: JSON) throws -> Int {
        guard let pairs = json.objectValue else { throw SchemaError(description: "--import: expected an object of type -> [records]") }
        var n = 0
        try store.db.savepoint {
            store.events.expectBulk(pairs.compactMap { store.schema.object($0.0)?.name }, count: pairs.reduce(0) { $0 + ($1.1.arrayValue?.count ?? 0) })
            for (type, list) in pairs {
                guard let obj = store.schema.object(type) else { throw SchemaError(description: "--import: unknown sObject type '\(type)'") }
                for rec in list.arrayValue ?? [] {
                    let id = rec.value(forKeyIgnoringCase: "Id")?.stringValue.flatMap(SFId.to18)
                    if let id, !id.hasPrefix(obj.keyPrefix) { throw SchemaError(description: "--import: id \(id) does not have \(obj.name)'s key prefix \(obj.keyPrefix)") }
                    if let id, try store.meta(obj, id: id) != nil { continue }
                    let created = rec.value(forKeyIgnoringCase: "CreatedDate")?.stringValue.flatMap(SFTime.parseDateTime)
                    let modified = rec.value(forKeyIgnoringCase: "LastModifiedDate")?.stringValue.flatMap(SFTime.parseDateTime)
                    let values: [(FieldDef, SQLValue)]
                    do {
                        values = try store.columnValues(obj, body: rec, creating: true, ignoring: ["id", "createddate", "lastmodifieddate", "systemmodstamp", "isdeleted"])
                    } catch let e as APIError {
                        throw SchemaError(description: "--import: \(obj.name) record \(n + 1): \(e.errorCode): \(e.message)")
                    }
                    if let modified { store.clock.advance(past: modified) }
                    try store.create(obj, values: values, explicitId: id,
                                     created: created.map { SFTime.format(millis: $0) } ?? modified.map { SFTime.format(millis: $0) },
                                     modified: modified.map { SFTime.format(millis: $0) })
                    n += 1
                }
            }
        }
        return n
    }
}
