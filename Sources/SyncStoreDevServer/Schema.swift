/// sObject type definitions, loaded from a JSON schema file (format in README.md).

enum FieldType: String, Sendable {
    case id, string, textarea, email, phone, url, picklist, boolean, int, double, currency, percent, date, datetime, reference

    var isText: Bool {
        switch self {
        case .string, .textarea, .email, .phone, .url, .picklist: return true
        default: return false
        }
    }
    var isNumeric: Bool { self == .int || self == .double || self == .currency || self == .percent }

    var soapType: String {
        switch self {
        case .id, .reference: return "tns:ID"
        case .boolean: return "xsd:boolean"
        case .int: return "xsd:int"
        case .double, .currency, .percent: return "xsd:double"
        case .date: return "xsd:date"
        case .datetime: return "xsd:dateTime"
        default: return "xsd:string"
        }
    }

    var sqlType: String {
        switch self {
        case .boolean, .int: return "INTEGER"
        case .double, .currency, .percent: return "REAL"
        case .id, .reference, .date, .datetime: return "TEXT"
        default: return "TEXT COLLATE NOCASE" // SOQL string comparison and ordering ignore case
        }
    }
}

struct FieldDef: Sendable {
    var name: String
    var label: String
    var type: FieldType
    var length: Int
    var nillable: Bool
    var createable: Bool
    var updateable: Bool
    var externalId: Bool
    var unique: Bool
    var nameField: Bool
    var referenceTo: String?
    var relationshipName: String?
    var childRelationshipName: String?
    var compoundOf: [String]
    var picklistValues: [String]
    var defaultValue: JSON?
    var system: Bool
    /// Lookup behaviour when the parent is deleted: delete this record too (Contact/Opportunity
    /// on Account, as in a real org) or, by default, clear the lookup.
    var cascadeDelete = false

    /// Required on create: not nillable, settable, no default (booleans default to false).
    var requiredOnCreate: Bool { !nillable && createable && defaultValue == nil && type != .boolean }
}

struct ChildRelationship: Sendable {
    let name: String
    let childSObject: String
    let field: String
    var cascadeDelete = false
}

struct SObjectDef: Sendable {
    var name: String
    var label: String
    var labelPlural: String
    var keyPrefix: String
    var custom: Bool
    var fields: [FieldDef]
    var childRelationships: [ChildRelationship] = []
    private var index: [String: Int] = [:]

    init(name: String, label: String, labelPlural: String, keyPrefix: String, custom: Bool, fields: [FieldDef]) {
        self.name = name
        self.label = label
        self.labelPlural = labelPlural
        self.keyPrefix = keyPrefix
        self.custom = custom
        self.fields = fields
        for (i, f) in fields.enumerated() { index[f.name.lowercased()] = i }
    }

    func field(_ name: String) -> FieldDef? { index[name.lowercased()].map { fields[$0] } }

    var tableName: String { "\"t_\(name)\"" }
    var nameFieldName: String? { fields.first(where: { $0.nameField })?.name }

    func relationship(_ name: String) -> FieldDef? {
        let lower = name.lowercased()
        return fields.first { $0.type == .reference && $0.relationshipName?.lowercased() == lower }
    }

    func childRelationship(_ name: String) -> ChildRelationship? {
        let lower = name.lowercased()
        return childRelationships.first { $0.name.lowercased() == lower }
    }
}

struct BriefcaseRule: Sendable {
    let sobjectType: String
    let whereClause: String?
}

struct Briefcase: Sendable {
    let id: String
    let name: String
    let rules: [BriefcaseRule]
}

struct SchemaError: Error, CustomStringConvertible { let description: String }

struct Schema: Sendable {
    private(set) var objects: [SObjectDef] = []
    private var index: [String: Int] = [:]
    private(set) var briefcases: [Briefcase] = []

    func object(_ name: String) -> SObjectDef? { index[name.lowercased()].map { objects[$0] } }
    func object(prefix: String) -> SObjectDef? { objects.first { $0.keyPrefix == prefix } }

    static func load(json: JSON) throws -> Schema {
        guard let list = json["sobjects"]?.arrayValue else { throw SchemaError(description: "schema: missing \"sobjects\" array") }
        var schema = Schema()
        for item in list {
            guard let name = item["name"]?.stringValue, isIdentifier(name) else {
                throw SchemaError(description: "schema: every sobject needs a \"name\" made of letters, digits and _")
            }
            guard let prefix = item["keyPrefix"]?.stringValue, prefix.utf8.count == 3, prefix.utf8.allSatisfy(SFId.isIdChar) else {
                throw SchemaError(description: "schema: \(name) needs a 3-character \"keyPrefix\"")
            }
            if schema.object(name) != nil { throw SchemaError(description: "schema: duplicate sobject \(name)") }
            if schema.object(prefix: prefix) != nil { throw SchemaError(description: "schema: duplicate keyPrefix \(prefix)") }
            var fields = systemFields()
            for f in item["fields"]?.arrayValue ?? [] {
                let field = try parseField(f, object: name)
                if fields.contains(where: { $0.name.lowercased() == field.name.lowercased() }) {
                    throw SchemaError(description: "schema: duplicate field \(name).\(field.name)")
                }
                fields.append(field)
            }
            let def = SObjectDef(
                name: name,
                label: item["label"]?.stringValue ?? name,
                labelPlural: item["labelPlural"]?.stringValue ?? (item["label"]?.stringValue ?? name) + "s",
                keyPrefix: prefix,
                custom: item["custom"]?.boolValue ?? name.hasSuffix("__c"),
                fields: fields)
            schema.index[name.lowercased()] = schema.objects.count
            schema.objects.append(def)
        }
        // Resolve lookups and derive child relationships.
        for obj in schema.objects {
            for f in obj.fields where f.type == .reference {
                guard let target = f.referenceTo, let parentIndex = schema.index[target.lowercased()] else {
                    throw SchemaError(description: "schema: \(obj.name).\(f.name) references unknown sobject \(f.referenceTo ?? "?")")
                }
                if let child = f.childRelationshipName {
                    schema.objects[parentIndex].childRelationships.append(ChildRelationship(name: child, childSObject: obj.name, field: f.name, cascadeDelete: f.cascadeDelete))
                }
            }
            for f in obj.fields {
                for part in f.compoundOf where obj.field(part) == nil {
                    throw SchemaError(description: "schema: \(obj.name).\(f.name) is compound of unknown field \(part)")
                }
            }
        }
        for b in json["briefcases"]?.arrayValue ?? [] {
            guard let id = b["id"]?.stringValue, let name = b["name"]?.stringValue else {
                throw SchemaError(description: "schema: briefcases need \"id\" and \"name\"")
            }
            var rules: [BriefcaseRule] = []
            for r in b["rules"]?.arrayValue ?? [] {
                guard let t = r["sobjectType"]?.stringValue, schema.object(t) != nil else {
                    throw SchemaError(description: "schema: briefcase \(name) has a rule for an unknown sobjectType")
                }
                rules.append(BriefcaseRule(sobjectType: t, whereClause: r["where"]?.stringValue))
            }
            schema.briefcases.append(Briefcase(id: id, name: name, rules: rules))
        }
        return schema
    }

    static func isIdentifier(_ s: String) -> Bool {
        guard let first = s.utf8.first, (65...90).contains(first) || (97...122).contains(first) else { return false }
        return s.utf8.allSatisfy { SFId.isIdChar($0) || $0 == UInt8(ascii: "_") } && s.utf8.count <= 80
    }

    private static func systemFields() -> [FieldDef] {
        func sys(_ name: String, _ label: String, _ type: FieldType, nillable: Bool = false) -> FieldDef {
            FieldDef(name: name, label: label, type: type, length: type == .id ? 18 : 0, nillable: nillable,
                     createable: false, updateable: false, externalId: false, unique: false, nameField: false,
                     referenceTo: nil, relationshipName: nil, childRelationshipName: nil, compoundOf: [],
                     picklistValues: [], defaultValue: nil, system: true)
        }
        return [
            sys("Id", "Record ID", .id),
            sys("IsDeleted", "Deleted", .boolean),
            sys("CreatedDate", "Created Date", .datetime),
            sys("LastModifiedDate", "Last Modified Date", .datetime),
            sys("SystemModstamp", "System Modstamp", .datetime),
        ]
    }

    private static func parseField(_ f: JSON, object: String) throws -> FieldDef {
        guard let name = f["name"]?.stringValue, isIdentifier(name) else {
            throw SchemaError(description: "schema: a field of \(object) has no valid \"name\"")
        }
        guard let typeName = f["type"]?.stringValue, let type = FieldType(rawValue: typeName), type != .id else {
            throw SchemaError(description: "schema: \(object).\(name) has an unknown \"type\" (use string, textarea, email, phone, url, picklist, boolean, int, double, currency, percent, date, datetime, reference)")
        }
        let compound = f["compoundOf"]?.arrayValue?.compactMap { $0.stringValue } ?? []
        let readOnly = (f["readOnly"]?.boolValue ?? false) || !compound.isEmpty
        let required = f["required"]?.boolValue ?? false
        if type == .reference, f["referenceTo"]?.stringValue == nil {
            throw SchemaError(description: "schema: \(object).\(name) is a reference without \"referenceTo\"")
        }
        let defaultLength: Int
        switch type {
        case .string, .picklist, .email, .url: defaultLength = 255
        case .phone: defaultLength = 40
        case .textarea: defaultLength = 32768
        case .reference: defaultLength = 18
        default: defaultLength = 0
        }
        let extId = f["externalId"]?.boolValue ?? false
        var field = FieldDef(
            name: name,
            label: f["label"]?.stringValue ?? name,
            type: type,
            length: f["length"]?.intValue.map(Int.init) ?? defaultLength,
            nillable: !required && type != .boolean,
            createable: !readOnly,
            updateable: !readOnly && !(f["createOnly"]?.boolValue ?? false),
            externalId: extId,
            unique: (f["unique"]?.boolValue ?? false),
            nameField: f["nameField"]?.boolValue ?? false,
            referenceTo: f["referenceTo"]?.stringValue,
            relationshipName: f["relationshipName"]?.stringValue,
            childRelationshipName: f["childRelationshipName"]?.stringValue,
            compoundOf: compound,
            picklistValues: f["picklistValues"]?.arrayValue?.compactMap { $0.stringValue } ?? [],
            defaultValue: f["default"],
            system: false)
        field.cascadeDelete = f["cascadeDelete"]?.boolValue ?? false
        return field
    }

    /// The schema served when `--schema` is not given.
    static let builtInJSON = #"""
    {
      "sobjects": [
        {"name": "Account", "label": "Account", "labelPlural": "Accounts", "keyPrefix": "001", "fields": [
          {"name": "Name", "type": "string", "length": 255, "required": true, "nameField": true, "label": "Account Name"},
          {"name": "AccountNumber", "type": "string", "length": 40},
          {"name": "Type", "type": "picklist", "picklistValues": ["Prospect", "Customer - Direct", "Customer - Channel", "Partner", "Other"]},
          {"name": "Industry", "type": "picklist", "picklistValues": ["Agriculture", "Banking", "Education", "Energy", "Healthcare", "Manufacturing", "Media", "Retail", "Technology", "Transportation"]},
          {"name": "Phone", "type": "phone"},
          {"name": "Website", "type": "url"},
          {"name": "BillingCity", "type": "string", "length": 40},
          {"name": "BillingCountry", "type": "string", "length": 80},
          {"name": "AnnualRevenue", "type": "currency"},
          {"name": "NumberOfEmployees", "type": "int"},
          {"name": "Description", "type": "textarea"}
        ]},
        {"name": "Contact", "label": "Contact", "labelPlural": "Contacts", "keyPrefix": "003", "fields": [
          {"name": "FirstName", "type": "string", "length": 40},
          {"name": "LastName", "type": "string", "length": 80, "required": true},
          {"name": "Name", "type": "string", "length": 121, "compoundOf": ["FirstName", "LastName"], "nameField": true, "label": "Full Name"},
          {"name": "AccountId", "type": "reference", "referenceTo": "Account", "relationshipName": "Account", "childRelationshipName": "Contacts", "cascadeDelete": true, "label": "Account ID"},
          {"name": "Email", "type": "email", "length": 80},
          {"name": "Phone", "type": "phone"},
          {"name": "MobilePhone", "type": "phone"},
          {"name": "HomePhone", "type": "phone"},
          {"name": "Title", "type": "string", "length": 128},
          {"name": "Department", "type": "string", "length": 80},
          {"name": "MailingCity", "type": "string", "length": 40},
          {"name": "MailingCountry", "type": "string", "length": 80},
          {"name": "Birthdate", "type": "date"},
          {"name": "HasOptedOutOfEmail", "type": "boolean", "label": "Email Opt Out"},
          {"name": "Description", "type": "textarea"}
        ]},
        {"name": "Opportunity", "label": "Opportunity", "labelPlural": "Opportunities", "keyPrefix": "006", "fields": [
          {"name": "Name", "type": "string", "length": 120, "required": true, "nameField": true},
          {"name": "AccountId", "type": "reference", "referenceTo": "Account", "relationshipName": "Account", "childRelationshipName": "Opportunities", "cascadeDelete": true},
          {"name": "StageName", "type": "picklist", "required": true, "picklistValues": ["Prospecting", "Qualification", "Proposal", "Negotiation", "Closed Won", "Closed Lost"]},
          {"name": "CloseDate", "type": "date", "required": true},
          {"name": "Amount", "type": "currency"},
          {"name": "Probability", "type": "percent"},
          {"name": "Description", "type": "textarea"}
        ]},
        {"name": "Widget__c", "label": "Widget", "labelPlural": "Widgets", "keyPrefix": "a01", "custom": true, "fields": [
          {"name": "Name", "type": "string", "length": 80, "required": true, "nameField": true, "label": "Widget Name"},
          {"name": "External_Id__c", "type": "string", "length": 255, "externalId": true, "unique": true, "label": "External Id"},
          {"name": "Account__c", "type": "reference", "referenceTo": "Account", "relationshipName": "Account__r", "childRelationshipName": "Widgets__r", "label": "Account"},
          {"name": "Color__c", "type": "picklist", "picklistValues": ["Red", "Green", "Blue", "Black", "White"], "label": "Color"},
          {"name": "Quantity__c", "type": "double", "label": "Quantity"},
          {"name": "Price__c", "type": "currency", "label": "Price"},
          {"name": "Active__c", "type": "boolean", "label": "Active"},
          {"name": "Ship_Date__c", "type": "date", "label": "Ship Date"},
          {"name": "Notes__c", "type": "textarea", "label": "Notes"}
        ]}
      ],
      "briefcases": [
        {"id": "0gQ000000000001AAA", "name": "Field Sales", "rules": [
          {"sobjectType": "Account"},
          {"sobjectType": "Contact", "where": "AccountId != null"},
          {"sobjectType": "Widget__c", "where": "Active__c = true"}
        ]}
      ]
    }
    """#
}
